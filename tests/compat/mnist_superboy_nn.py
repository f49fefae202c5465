# The seed's MNIST script (../shared/seeds/mnist_superboy.py) with torch -> nn and torchvision ->
# nn.vision renamed (sed 's/torchvision/nn.vision/g; s/\\btorch\\b/nn/g'), and the epoch count and
# data root read from EPOCHS / DATA_ROOT: nothing else changed.
import nn
from nn.vision import datasets, transforms
from nn.vision.transforms import v2
from nn.utils.data import DataLoader, random_split
from collections import OrderedDict
from nn import nn, optim
import os
device = nn.device("cuda:0" if nn.cuda.is_available() else "cpu")


def main():
    """主函数"""

    # 自定义参数
    epoch_num = int(os.environ.get("EPOCHS", "200"))
    train_batch_size = 50
    test_batch_size = 1000
    validation_batch_size = 100
    path_save = "model_saved.pth"

    '''数据模块'''
    # 数据增强与图像转换Tensor
    transform = v2.Compose([v2.Resize((32, 32),),
                            transforms.ToTensor(),
                            ])

    # 获取数据集
    train_dataset = datasets.MNIST(root=os.environ.get("DATA_ROOT", "./data"), train=True, download=True, transform=transform)
    test_dataset = datasets.MNIST(root=os.environ.get("DATA_ROOT", "./data"), train=False, download=True, transform=transform)

    # 划分验证集
    validate_rate = 0.1
    train_dataset_size = len(train_dataset)
    validation_size = int(validate_rate * train_dataset_size)
    train_dataset, validation_dataset = random_split(train_dataset,
                                                     [train_dataset_size-validation_size, validation_size])

    # 加载数据集
    train_loader = DataLoader(train_dataset, batch_size=train_batch_size, shuffle=True, pin_memory=True)
    test_loader = DataLoader(test_dataset, batch_size=test_batch_size, shuffle=False, pin_memory=True)
    validation_loader = DataLoader(validation_dataset, batch_size=validation_batch_size, shuffle=False, pin_memory=True)

    '''模型模块'''
    class SuperBoy(nn.Module):
        # 初始化
        def __init__(self):
            super().__init__()
            self.part1 = nn.Sequential(OrderedDict([('conv1', nn.Conv2d(1, 32, (3, 3))),
                                                    ('relu1', nn.ReLU()),
                                                    ('pool1', nn.MaxPool2d((2, 2), 2)),
                                                    ('conv2', nn.Conv2d(32, 64, (3, 3))),
                                                    # ('BN1', nn.BatchNorm2d(64)),
                                                    ('relu2', nn.ReLU()),
                                                    ('pool2', nn.MaxPool2d((2, 2), 1)),
                                                    ]))
            self.part2 = nn.Sequential(OrderedDict([('linear1', nn.Linear(64*12*12, 200)),
                                                    ('BN2', nn.BatchNorm1d(200)),
                                                    ('relu3', nn.ReLU()),
                                                    ('dropout', nn.AlphaDropout(inplace=True, p=0.4)),
                                                    ('linear2', nn.Linear(200, 10)),
                                                    ]))
            self.part1.conv1.weight.data = nn.init.kaiming_normal_(self.part1.conv1.weight.data)
            self.part1.conv2.weight.data = nn.init.kaiming_normal_(self.part1.conv2.weight.data)
            self.part2.linear1.weight.data = nn.init.kaiming_normal_(self.part2.linear1.weight.data)
            self.part2.linear2.weight.data = nn.init.kaiming_normal_(self.part2.linear2.weight.data)

        # 前向传播
        def forward(self, x): 
            x = self.part1(x)
            x = x.view(x.size(0), -1)   # 在这里x.size(0)是Batch_size，剩余的自动计算展开
            out = self.part2(x)
            return out

    model = SuperBoy()
    model.to(device=device)

    '''优化模块'''
    loss_f = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=0.0005, weight_decay=0.0001)

    if os.path.isfile(path_save):
        # 如果文件存在，加载 checkpoint
        checkpoint = nn.load(path_save, map_location="cuda:0")
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        start_epoch = checkpoint["epoch"] + 1

    else:
        # 如果文件不存在，初始化模型、优化器和学习率调度器
        print(f"Checkpoint file '{path_save}' does not exist. Starting from scratch.")
        start_epoch = 0

    # 判断是否进入训练模式
    if start_epoch < epoch_num:

        '''迭代模块'''
        for epoch in range(start_epoch, epoch_num):
            # 训练集训练
            model.train()

            correct_per_epoch = 0
            train_labels_sum = 0
            loss_per_epoch = 0
            count = 0

            for train_data, train_labels in train_loader:
                train_data, train_labels = train_data.to(device), train_labels.to(device)
                count += 1

                # forward & backward
                outputs = model(train_data)
                optimizer.zero_grad()

                # loss 计算
                loss = loss_f(outputs, train_labels)
                loss.backward()
                optimizer.step()
                loss_per_epoch += loss

                # 计算分类准确率
                _, predicted = nn.max(outputs, 1)
                correct_num = (predicted == train_labels).sum().item()
                correct_per_epoch += correct_num
                train_labels_sum += train_labels.size(0)

            loss_per_epoch /= count
            acc_train = correct_per_epoch / train_labels_sum
            print(f"Epoch:{epoch} Train Loss:{loss_per_epoch:.2f} Acc:{acc_train:.1%}")

            # 验证集验证
            model.eval()

            correct_per_epoch = 0
            valid_labels_sum = 0
            loss_per_epoch = 0
            count = 0

            for valid_data, valid_labels in validation_loader:
                valid_data, valid_labels = valid_data.to(device), valid_labels.to(device)
                count += 1

                # forward
                outputs = model(valid_data)

                # loss 计算
                loss = loss_f(outputs, valid_labels)
                loss_per_epoch += loss

                # 计算分类准确率
                _, predicted = nn.max(outputs, 1)
                correct_num = (predicted == valid_labels).sum().item()
                correct_per_epoch += correct_num
                valid_labels_sum += valid_labels.size(0)

            loss_per_epoch /= count
            acc_valid = correct_per_epoch / valid_labels_sum
            print(f"Epoch:{epoch} Validation Loss:{loss_per_epoch:.2f} Acc:{acc_valid:.1%}")

            # 每个epoch自动保存参数
            checkpoint = {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "epoch": epoch,
                }
            nn.save(checkpoint, path_save)

    else:

        '''测试模块'''
        def model_test():

            for test_data, test_labels in test_loader:
                test_data, test_labels = test_data.to(device), test_labels.to(device)

                # forward & backward
                test_outputs = model(test_data)
                optimizer.zero_grad()

                # loss 计算
                test_loss = loss_f(test_outputs, test_labels)

                # 计算分类准确率
                _, test_predicted = nn.max(test_outputs, 1)
                test_correct_num = (test_predicted == test_labels).sum().item()
                acc_test = test_correct_num / test_labels.size(0)

                print(f"Test Loss:{test_loss:.2f} Acc:{acc_test:.1%}")

        '''已训练好模型的使用'''
        model.eval()
        action = input("Enter you next action plz:")
        if action == "test":
            model_test()


if __name__ == "__main__":
    main()
